"""``python -m presidio_delink.cli``."""

from presidio_delink.cli import main

main()
