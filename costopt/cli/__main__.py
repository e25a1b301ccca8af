"""`python -m costopt.cli` runs the command line."""

from costopt.cli.main import main

main()
