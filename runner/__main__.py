from runner.ops.cli import console

console()
