"""``python -m presidio_delink``: the command line (same as ``presidio-delink``)."""

from presidio_delink.cli import main

main()
