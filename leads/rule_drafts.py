"""A rule drafted from a template: its literal words escaped, its variable parts RE2 groups.

The draft is a document of the rule language (docs/rules.md) with one ``cause`` rule on the stream kind the
template appeared in. Its ``domain`` and ``subdomain`` are left empty for a person to choose: the loader refuses
the draft until they are set, so nothing drafted runs before someone has classified it.
"""

from __future__ import annotations

import re

# What each placeholder of ``leads.masking`` (and Drain's ``<*>``) stood for, as RE2.
VARIABLE = {
    "<TIME>": r"[\d:.,TZ+-]+",
    "<URL>": r"\S+",
    "<PATH>": r"\S+",
    "<ADDR>": r"[0-9A-Fa-f.:]+",
    "<ID>": r"[0-9A-Fa-f-]+",
    "<HEX>": r"(?:0x)?[0-9A-Fa-f]+",
    "<HOST>": r"[\w.*-]+",
    "<RANK>": r"\d+",
    "<NUM>": r"\d+(?:\.\d+)*",
    "<*>": r"\S+",
}
_PART = re.compile("|".join(re.escape(name) for name in VARIABLE))
_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}])")


def pattern_of(template: str) -> str:
    """The RE2 pattern matching the template's lines: literal text escaped, each variable part a named group
    (``num1``, ``host1``, ...), words separated by any whitespace."""
    counts: dict[str, int] = {}
    words = []
    for word in template.split(" "):
        out, at = [], 0
        for match in _PART.finditer(word):
            out.append(_SPECIAL.sub(r"\\\1", word[at : match.start()]))
            name = "var" if match.group() == "<*>" else match.group()[1:-1].lower()
            counts[name] = counts.get(name, 0) + 1
            out.append(f"(?P<{name}{counts[name]}>{VARIABLE[match.group()]})")
            at = match.end()
        out.append(_SPECIAL.sub(r"\\\1", word[at:]))
        words.append("".join(out))
    return r"\s+".join(word for word in words if word)


def rule_draft(template: str, key: str, kind: str) -> str:
    """A rule document drafted from ``template`` (its id ``key``), seen in streams of ``kind``."""
    return (
        f"# Drafted from the failure pattern {key}. Choose its domain and subdomain (docs/rules.md), then save.\n"
        "rules:\n"
        f"  - id: site.pattern.{key}\n"
        f"    description: {_quoted('Drafted from: ' + template)}\n"
        f"    streams: [{kind}]\n"
        f"    pattern: {_quoted(pattern_of(template))}\n"
        "    role: cause\n"
        "    domain:      # to choose: hardware, network, software, application, infrastructure, scheduler, ...\n"
        "    subdomain:   # to choose\n"
        f"    summary: {_quoted('Pattern ' + key + ' on {node}')}\n"
    )


def _quoted(text: str) -> str:
    """A YAML single-quoted scalar: backslashes stay as they are, a quote is doubled."""
    return "'" + text.replace("'", "''") + "'"


def template_parts(template: str) -> list[tuple[str, bool]]:
    """The template as (text, variable) parts, for showing its variable parts marked."""
    parts, at = [], 0
    for match in _PART.finditer(template):
        if match.start() > at:
            parts.append((template[at : match.start()], False))
        parts.append((match.group(), True))
        at = match.end()
    if at < len(template):
        parts.append((template[at:], False))
    return parts
