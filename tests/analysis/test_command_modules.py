"""No analysis command module imports another command's module (analysis/commands.py): a command's
modules are the ones its `COMMANDS` entry names (its settings' module and its function's), and
none of them may reach a module of another command by its import statements, directly or through
any project module it imports (lazy and type-only imports included, as the import-graph test
reads them). A command that composes others goes through `analysis.commands`; what two commands
share lives in a module of its own. The rule is run on a made-up registry first."""

from __future__ import annotations

from analysis.commands import COMMANDS, Command
from tests.project.test_import_graph import ROOT, import_graph, project_modules


def command_modules(commands: dict[str, Command]) -> dict[str, str]:
    """Module -> the command whose `COMMANDS` entry names it."""
    owner: dict[str, str] = {}
    for name, spec in commands.items():
        for named in (spec.settings, spec.function):
            owner[named.split(":")[0]] = name
    return owner


def crossings(graph: dict[str, set[str]], owner: dict[str, str]) -> list[str]:
    """Each command module that reaches another command's module, as 'a -> … -> b (command)'."""
    found = []
    for start in sorted(owner):
        came_from: dict[str, str | None] = {start: None}
        queue = [start]
        while queue:
            module = queue.pop(0)
            for target in sorted(graph.get(module, ())):
                if target in came_from:
                    continue
                came_from[target] = module
                if owner.get(target, owner[start]) != owner[start]:
                    path = [target]
                    while came_from[path[-1]] is not None:
                        path.append(came_from[path[-1]])
                    found.append(" -> ".join(reversed(path)) + f" ({owner[target]})")
                else:
                    queue.append(target)
    return found


def test_the_rule_sees_a_command_reached_through_a_shared_module():
    commands = {
        "a": Command("", "pkg.a_settings:S", "pkg.a:run"),
        "b": Command("", "pkg.b:S", "pkg.b:run"),
        "c": Command("", "pkg.c:S", "pkg.c:run"),
    }
    graph = {
        "pkg.a": {"pkg.a_settings", "pkg.shared", "pkg.registry"},  # its own settings: fine
        "pkg.a_settings": set(),
        "pkg.shared": {"pkg.b"},  # a shared module that imports a command
        "pkg.b": {"pkg.shared"},
        "pkg.c": {"pkg.registry"},  # through the registry, by name: fine
        "pkg.registry": set(),
    }
    assert crossings(graph, command_modules(commands)) == [
        "pkg.a -> pkg.shared -> pkg.b (b)",
    ]


def test_no_command_module_imports_another_commands_module():
    owner = command_modules(COMMANDS)
    modules = project_modules(ROOT, ("analysis",))
    assert set(owner) <= set(modules), set(owner) - set(modules)  # every named module was found
    bad = crossings(import_graph(modules), owner)
    assert not bad, "command modules that import another command's:\n" + "\n".join(bad)
