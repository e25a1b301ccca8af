"""Foundations every stage uses: errors and exit codes, SI units and formatting, safe file reading,
value checks, package paths and version. Nothing here imports another costopt folder."""
