"""The flags README.md and docs/*.md name for xlate, xlate-server, xlate-trainer and xlate-health
exist: each is in the `--helpfull` of the program it is named for.

A flag is named for a program
  * in a command (a fenced shell line, backslash continuations joined, or an inline code span)
    whose program is one of them: `build/cli/xlate translate --beam_size 4`,
    `xlate-server --model_dir DIR`, `$T train --max_steps 20` with `T=.../xlate-trainer` in the
    same block, `mpirun -np 2 $T train ...`; or
  * in a code span of flags alone (`--max_batch_tokens`, `--device auto|cpu|cuda`), for the
    program of its document (FILE_PROGRAMS below). In a document about several programs, such
    a flag must belong to one of them or to a script of the repository (an argparse flag of
    bench/, scripts/, models/ or server/examples/), or be one of FOREIGN_FLAGS.
Flags of other commands (python3 bench/..., docker, cmake, mpirun's own) are not checked here.

Run:  XLATE_BIN=build/cli/xlate XLATE_SERVER_BIN=build/server/xlate-server \\
      XLATE_TRAINER_BIN=build/cli/xlate-trainer XLATE_HEALTH_BIN=build/server/xlate-health \\
      python3 tests/docs/test_doc_flags.py        (CTest: docs_flags; defaults: build/...)
"""
import glob
import os
import re
import subprocess
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAMS = {  # program: (environment variable, default path, arguments that list every flag)
    "xlate": ("XLATE_BIN", "build/cli/xlate", ["translate", "--helpfull"]),
    "xlate-server": ("XLATE_SERVER_BIN", "build/server/xlate-server", ["--helpfull"]),
    "xlate-trainer": ("XLATE_TRAINER_BIN", "build/cli/xlate-trainer", ["train", "--helpfull"]),
    "xlate-health": ("XLATE_HEALTH_BIN", "build/server/xlate-health", ["--helpfull"]),
}

# The program a document's bare flags belong to; None: several programs, see above.
FILE_PROGRAMS = {
    "docs/server.md": "xlate-server",
    "docs/serving-models.md": "xlate-server",
    "docs/hardening.md": "xlate-server",
    "docs/cli.md": "xlate",
    "docs/bleu.md": "xlate",
    "docs/trainer.md": "xlate-trainer",
    "docs/data-parallel-training.md": "xlate-trainer",
}

# Sections (a heading and the headings under it) whose bare flags are another program's: the
# heading's text -> the program, or ANY (one of the programs or a script).
ANY = "any"
SECTION_PROGRAMS = {
    "docs/data-parallel-training.md": {
        "Measured (CPU ranks)": ANY,                        # bench/data_parallel_overlap.py
        "Projected time to train on 8 GPUs": ANY,           # bench/project_time_to_train.py
    },
}

# Flags every program has (Abseil's).
ABSL_FLAGS = {"help", "helpfull", "helpshort", "helppackage", "helpon", "helpmatch", "version",
              "only_check_args", "flagfile", "fromenv", "tryfromenv", "undefok"}

# Flags of other tools that the documents name as bare code spans: flag -> the tool.
FOREIGN_FLAGS = {
    "target": "docker build --target (docs/deploy.md)",
    "clock-control": "Nsight Compute's ncu (docs/cuda-backend.md)",
    "list-elf": "cuobjdump (docs/cuda-backend.md)",
    "list-ptx": "cuobjdump (docs/cuda-backend.md)",
    "oversubscribe": "Open MPI's mpirun",
    "allow-run-as-root": "Open MPI's mpirun",
}

LAUNCHERS = {"mpirun", "mpiexec", "nice", "time", "env", "sudo", "exec", "timeout"}
FLAG = re.compile(r"^--([A-Za-z][A-Za-z0-9_-]*)")
# Fenced blocks in these languages are not shell commands.
NOT_SHELL = {"python", "py", "json", "proto", "protobuf", "yaml", "yml", "text", "cpp", "c++"}


def documents():
    return ["README.md"] + sorted(os.path.relpath(p, REPO)
                                  for p in glob.glob(os.path.join(REPO, "docs", "*.md")))


def helpfull_flags(program):
    variable, default, arguments = PROGRAMS[program]
    path = os.environ.get(variable) or os.path.join(REPO, default)
    if not os.access(path, os.X_OK):
        return None
    result = subprocess.run([path] + arguments, capture_output=True, text=True, timeout=60)
    flags = set(re.findall(r"^\s+--([A-Za-z0-9_]+) \(", result.stdout + result.stderr, re.M))
    if not flags:
        raise AssertionError(f"{path} {' '.join(arguments)} listed no flags:\n{result.stderr}")
    return flags | ABSL_FLAGS


def script_flags():
    """Every argparse flag of the repository's scripts (bench, scripts, models, examples)."""
    flags = set()
    for pattern in ("bench/*.py", "bench/gpu/*.py", "scripts/*.py", "models/*.py",
                    "server/examples/*.py", "tests/**/*.py"):
        for path in glob.glob(os.path.join(REPO, pattern), recursive=True):
            with open(path, encoding="utf-8") as f:
                flags.update(re.findall(r"""add_argument\(\s*["']--([A-Za-z0-9_-]+)""", f.read()))
    return flags


def sections(text):
    """[(heading titles from the top, the section's text)]: a document cut at its headings
    (outside fenced blocks)."""
    result, path, lines, fenced = [], [], [], False
    for line in text.split("\n"):
        if re.match(r"^\s*```", line):
            fenced = not fenced
        heading = None if fenced else re.match(r"^(#+)\s+(.*?)\s*$", line)
        if heading:
            result.append((tuple(title for _, title in path), "\n".join(lines)))
            level = len(heading.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level,
                                                                             heading.group(2))]
            lines = []
        else:
            lines.append(line)
    result.append((tuple(title for _, title in path), "\n".join(lines)))
    return result


def split_markdown(text):
    """(fenced shell blocks as lists of lines, the text outside fences) of a document."""
    blocks, outside, block, language = [], [], None, None
    for line in text.split("\n"):
        fence = re.match(r"^\s*```+\s*([A-Za-z0-9+_-]*)", line)
        if fence and block is None:
            block, language = [], fence.group(1).lower()
            outside.append("")
        elif fence:
            if language not in NOT_SHELL:
                blocks.append(block)
            block = None
            outside.append("")
        elif block is not None:
            block.append(line)
        else:
            outside.append(line)
    return blocks, "\n".join(outside)


def block_commands(lines):
    """Commands of a fenced block: continuations joined, comments dropped, pipelines split."""
    joined, current = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    if current:
        joined.append(current)
    commands = []
    for line in joined:
        line = re.sub(r"(^|\s)#.*$", "", line)
        commands += [c for c in re.split(r"\s(?:\|\||\||&&|;)\s|;\s*$", line) if c.strip()]
    return commands


def program_of(command, variables):
    """(program name or None, the tokens after the program) of one command."""
    tokens = command.split()
    i = 0
    while i < len(tokens) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[i]):
        i += 1
    if i == len(tokens):
        return None, []

    def name(token):
        token = token.strip("\"'")
        variable = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", token)
        if variable:
            token = variables.get(variable.group(1), token)
        base = os.path.basename(token)
        return base if base in PROGRAMS else None

    first = os.path.basename(tokens[i])
    if name(tokens[i]):
        return name(tokens[i]), tokens[i + 1:]
    if first in LAUNCHERS:
        for j in range(i + 1, len(tokens)):
            if name(tokens[j]):
                return name(tokens[j]), tokens[j + 1:]
    return None, []


def flags_in(tokens):
    found = []
    for token in tokens:
        match = FLAG.match(token.lstrip("[(`'\""))
        if match:
            found.append(match.group(1))
    return found


def named_flags(path):
    """[(program or None, flag, where)] named in one document."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        text = f.read()
    blocks, outside = split_markdown(text)
    found = []
    for block in blocks:
        variables = {}
        for command in block_commands(block):
            for assignment in re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=(\S+)", command):
                variables[assignment[0]] = assignment[1]
            program, tokens = program_of(command, variables)
            if program:
                found += [(program, flag, command.strip()) for flag in flags_in(tokens)]
    overrides = SECTION_PROGRAMS.get(path, {})
    for headings, section in sections(outside):
        default = FILE_PROGRAMS.get(path)
        for title in headings:
            default = overrides.get(title, default)
        default = None if default == ANY else default
        for span in re.findall(r"`([^`]+)`", section):
            span = " ".join(span.split())
            program, tokens = program_of(span, {})
            if program:
                found += [(program, flag, span) for flag in flags_in(tokens)]
            elif span.lstrip("[(").startswith("--"):
                found += [(default, flag, span) for flag in flags_in(span.split())]
    return found


class DocumentedFlagsExist(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.flags = {program: helpfull_flags(program) for program in PROGRAMS}
        cls.script_flags = script_flags()

    def known(self, program, flag):
        flags = self.flags[program]
        return flag in flags or (flag.startswith("no") and flag[2:] in flags)

    def check(self, path):
        named = named_flags(path)
        unknown, unchecked = [], 0
        for program, flag, where in named:
            if program is None:
                built = [p for p in PROGRAMS if self.flags[p] is not None]
                if not (any(self.known(p, flag) for p in built) or flag in self.script_flags
                        or flag in FOREIGN_FLAGS):
                    unknown.append(f"--{flag} (no program or script has it) in `{where}`")
            elif self.flags[program] is None:
                unchecked += 1
            elif not self.known(program, flag):
                unknown.append(f"--{flag} is not a flag of {program} in `{where}`")
        if unchecked and unchecked == len(named):
            self.skipTest(f"{path}: the programs it names are not built")
        self.assertFalse(unknown, f"{path}:\n  " + "\n  ".join(unknown))
        return named


def add_document_tests():
    for path in documents():
        def test(self, path=path):
            self.check(path)
        name = "test_" + re.sub(r"\W", "_", path)
        setattr(DocumentedFlagsExist, name, test)


add_document_tests()


class TheCheckFindsFlags(unittest.TestCase):
    """The parser itself: what it attributes to which program (no binary needed)."""

    def test_commands_spans_and_variables(self):
        blocks, outside = split_markdown(
            "Text `xlate-server --port 1` and `--max_steps 5` here.\n"
            "```sh\nT=build/cli/xlate-trainer D=x\n$T train --data $D \\\n    --seed 3\n"
            "mpirun -np 2 $T train --bucket_mb 4   # a comment --not_a_flag\n"
            "echo hi | build/cli/xlate translate --beam_size 2\n"
            "python3 bench/soak.py --duration_s 5\n```\n"
            "```python\nxlate-server --in_python\n```\n")
        self.assertEqual(len(blocks), 1)
        variables, found = {}, []
        for command in block_commands(blocks[0]):
            for name, value in re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=(\S+)", command):
                variables[name] = value
            program, tokens = program_of(command, variables)
            found += [(program, flag) for flag in flags_in(tokens)] if program else []
        self.assertEqual(found, [("xlate-trainer", "data"), ("xlate-trainer", "seed"),
                                 ("xlate-trainer", "bucket_mb"), ("xlate", "beam_size")])
        self.assertIn("xlate-server --port 1", outside)
        self.assertNotIn("in_python", outside)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
