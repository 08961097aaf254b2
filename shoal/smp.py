"""``python -m shoal.smp [-f FACTOR] app.py``: see :mod:`shoal.threads.launcher`."""

from shoal.threads.launcher import main

if __name__ == "__main__":
    main()
