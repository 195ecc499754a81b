"""``python -m kairos_gym.cli``: the ``kairos-gym`` command (:func:`kairos_gym.cli.main.main`)."""

import sys

from kairos_gym.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
