"""PLACEHOLDER (being written): the dspsim command line."""
import sys


def main(argv=None):
    print("dspsim: the command line is being written", file=sys.stderr)
    return 2
