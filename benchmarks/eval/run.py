"""Run `presidio-delink eval` from a checkout: python benchmarks/eval/run.py ARGS."""

from presidio_delink.cli.eval_cmd import eval_command

if __name__ == "__main__":
    eval_command()
