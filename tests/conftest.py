"""Test-run options: none. (An ``--engine python|native`` option picked the simulator engine of the run until the
Python reference engine was removed; the native core is the only engine, and ``tests/golden/`` holds what the
Python engine gave.)"""
