from hivelore.cli import run

run()
