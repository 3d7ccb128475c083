"""Run `presidio-delink eval` before it is registered: python benchmarks/eval/run.py ARGS."""

from presidio_delink.eval.cli import eval_command

if __name__ == "__main__":
    eval_command()
