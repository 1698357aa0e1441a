"""`numsweep completion bash`: a bash completion script written from numsweep's own parser, so
it lists exactly the commands, flags and choices the command line has (no completion package:
neither argcomplete nor shtab is a numsweep dependency, and a static script costs nothing at
each TAB, where argcomplete imports the program).

    numsweep completion bash > ~/.local/share/bash-completion/completions/numsweep

Completes the command, then per command its flags, a flag's choices (`--format table|json`),
file names where a file is read (`sweep`'s CONFIG, a flag naming a directory) and the analysis
commands after `analyze`.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from analysis.cli_conventions import ConventionalParser

TEMPLATE = """# bash completion for numsweep (written by `numsweep completion bash`)
_numsweep() {{
    local cur prev cmd i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd="${{COMP_WORDS[i]}}"; break ;; esac
    done
    if [[ -z "$cmd" ]]; then
        COMPREPLY=($(compgen -W {top} -- "$cur"))
        return
    fi
    case "$cmd $prev" in
{choices}
    esac
    local words=""
    case "$cmd" in
{commands}
    esac
    [[ -n "$words" ]] && COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _numsweep numsweep
"""


class CompletableParser(ConventionalParser):
    """A `ConventionalParser` (defaults and choices in its help) that keeps what it was given,
    for `bash_script` (argparse keeps its arguments in private attributes only): its arguments
    and, where numsweep's parser adds them, its commands' parsers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arguments: list[argparse.Action] = []
        self.commands: dict[str, CompletableParser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action


def _words(words: list[str]) -> str:
    return shlex.quote(" ".join(words))


def bash_script(parser: CompletableParser, analysis_commands: list[str] | None = None) -> str:
    """The completion script of `parser` (numsweep's), with `analysis_commands` (default: the
    analysis package's) after `analyze`."""
    if analysis_commands is None:
        from analysis.commands import COMMANDS

        analysis_commands = list(COMMANDS)
    commands = parser.commands
    top = [flag for a in parser.arguments for flag in a.option_strings] + list(commands)
    choice_cases, command_cases = [], []
    for name, sub in commands.items():
        flags = [flag for a in sub.arguments for flag in a.option_strings]
        for action in sub.arguments:
            if action.option_strings and action.choices:
                for flag in action.option_strings:
                    choice_cases.append(
                        f'        "{name} {flag}") COMPREPLY=($(compgen -W '
                        f'{_words([str(c) for c in action.choices])} -- "$cur")); return ;;'
                    )
        positional = [a for a in sub.arguments if not a.option_strings and a.choices]
        words = [str(c) for a in positional for c in a.choices]
        if name == "analyze":
            flags, words = ["--help"], analysis_commands
        # a flag where the word starts with '-'; else a command's choices, or (none given)
        # bash's default: file names
        pick = f'[[ "$cur" == -* ]] && words={_words(flags)} || words={_words(words)}'
        command_cases.append(f"        {name}) {pick} ;;")
    return TEMPLATE.format(
        top=_words(top), choices="\n".join(choice_cases), commands="\n".join(command_cases)
    )
