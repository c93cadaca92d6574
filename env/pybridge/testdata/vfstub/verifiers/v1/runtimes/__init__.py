"""verifiers.v1.runtimes' ProgramResult, as a harness's launch returns it."""


class ProgramResult:
    def __init__(self, exit_code=0, stdout="", stderr=""):
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr
