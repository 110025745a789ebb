"""The ``rocketq`` command line."""
