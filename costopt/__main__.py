"""`python -m costopt` runs the command line."""

from costopt.cli import main

main()
