// The per-request columns Python reads (kairos_gym.sim.Simulator attributes of the same names, read-only numpy
// views; tools/fingerprint.py, kairos_gym.sim.metrics): one table, name -> the workload's or the run's column.
// The column's element type is its dtype (float64 or int64). The bindings export the names in this order
// (_core.REQUEST_COLUMNS) and serve every column by this table. Times in seconds, lengths in tokens, bytes in
// bytes (requests.hpp, workload.hpp).
#pragma once
#include <variant>

#include "requests.hpp"
#include "workload.hpp"

namespace kairos {

using ColumnRef = std::variant<Column<double> Workload::*, Column<int64_t> Workload::*, Column<double> Requests::*,
                               Column<int64_t> Requests::*>;

struct ColumnDef {
    const char* name;
    ColumnRef ref;
};

inline const ColumnDef REQUEST_COLUMNS[] = {
    {"arrival", &Workload::arrival},
    {"prompt", &Workload::prompt},
    {"output", &Workload::output},
    {"path", &Requests::path},
    {"first_token", &Requests::first_token},
    {"finish", &Requests::finish},
    {"prefill_start", &Requests::prefill_start},
    {"prefill_end", &Requests::prefill_end},
    {"exec_s", &Requests::exec_s},
    {"xfer_start", &Requests::xfer_start},
    {"xfer_end", &Requests::xfer_end},
    {"p_node", &Requests::p_node},
    {"d_node", &Requests::d_node},
    {"max_gap", &Requests::max_gap},
    {"kv_moved", &Requests::kv_moved},
    {"last_tok", &Requests::last_tok},
    {"ctx_base", &Requests::ctx_base},
    {"end_step", &Requests::end_step},
    {"gap_own", &Requests::gap_own},
    {"from_rec", &Requests::from_rec},
    {"timed_out", &Requests::timed_out},
    {"pulled_from", &Requests::pulled_from},
    {"gen", &Requests::gen},
    {"carry_gap", &Requests::carry_gap},
    {"attempt", &Requests::attempt},
    {"reentries", &Requests::reentries},
};

}  // namespace kairos
