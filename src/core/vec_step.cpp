#include "vec_step.hpp"

#include <algorithm>
#include <stdexcept>

namespace kairos {

VecStepper::VecStepper(std::vector<EnvStepper*> envs) : envs_(std::move(envs)) {
    if (envs_.empty()) throw std::invalid_argument("VecStepper: no env steppers");
    F = envs_[0]->obs.size();
    A = envs_[0]->mask.size();
    for (const EnvStepper* e : envs_) {
        if (e == nullptr || e->obs.size() != F || e->mask.size() != A)
            throw std::invalid_argument("VecStepper: env steppers differ in observation or mask size");
    }
    // envs of one scenario price the same prompt lengths: one memo for all of them (values never change)
    for (size_t i = 1; i < envs_.size(); ++i) envs_[i]->share_pricer_memos(*envs_[0]);
    size_t N = envs_.size();
    obs.assign(N * F, 0.0f);
    mask.assign(N * A, 0);
    valid.assign(N, 1);
    terminated.assign(N, 0);
    d_wait.assign(N, 0.0);
    d_viol.assign(N, 0);
    d_missed.assign(N, 0);
}

void VecStepper::set(size_t i, EnvStepper* e) {
    if (i >= envs_.size()) throw std::out_of_range("VecStepper.set: env index out of range");
    if (e == nullptr || e->obs.size() != F || e->mask.size() != A)
        throw std::invalid_argument("VecStepper.set: the env stepper differs in observation or mask size");
    if (envs_.size() > 1) e->share_pricer_memos(*envs_[i == 0 ? 1 : 0]);
    envs_[i] = e;
}

void VecStepper::step(const int64_t* actions, const uint8_t* active) {
    for (size_t i = 0; i < envs_.size(); ++i) {
        if (!active[i]) continue;
        EnvStepper& e = *envs_[i];
        EnvStepResult r = e.step(actions[i]);
        valid[i] = r.valid;
        terminated[i] = r.terminated;
        d_wait[i] = r.d_wait;
        d_viol[i] = r.d_viol;
        d_missed[i] = r.d_missed;
        std::copy(e.obs.begin(), e.obs.end(), obs.begin() + static_cast<std::ptrdiff_t>(i * F));
        std::copy(e.mask.begin(), e.mask.end(), mask.begin() + static_cast<std::ptrdiff_t>(i * A));
    }
}

}  // namespace kairos
