"""``python -m ncclctl``."""

from ncclctl.cli import main

if __name__ == "__main__":  # pragma: no cover - exercised through subprocess tests
    main()
