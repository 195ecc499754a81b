"""The ``kairos-gym`` command line: the parser in :mod:`kairos_gym.cli.main`, one module per command group."""
