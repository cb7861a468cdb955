"""Certificate subject -> principal name: Kafka's ``ssl.principal.mapping.rules``.

Why: ACLs and ``super_users`` name principals, and a certificate's full subject
(``CN=alice,OU=eng,O=acme``) is long and changes when the CA's layout does. Kafka lets the
operator map subjects to short names with rules; tslog takes the same text in
``tls_principal_mapping_rules``, so a rule written for a Kafka broker works here.

Syntax (Kafka's): rules separated by commas or newlines, tried in order, the first that
matches decides:

- ``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the last slash (lower
  or upper case the result): when the regular expression ``pattern`` matches the whole
  subject (RFC 2253 form, as ``tls.subject_dn`` writes it), the name is the subject with
  ``pattern`` replaced by ``replacement``, where ``$1``, ``$2`` ... are the groups. A ``/`` or
  ``\\`` inside either part is escaped with a backslash.
- ``DEFAULT``: the subject as it is.

A subject no rule matches has no principal: the connection is refused (as Kafka fails the
authentication). The default rules are ``DEFAULT``. Patterns are Python regular expressions,
which agree with Java's for the usual classes, groups and quantifiers.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))"
                   r"\s*(?:[,\n]|$)")
_GROUP_REFERENCE = re.compile(r"\$(\d+)")


class MappingRulesError(ValueError):
    """The rules text cannot be parsed; the message says where."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        name = self.pattern.sub(self.replacement, subject)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


def _unescape(text: str) -> str:
    return re.sub(r"\\([\\/])", r"\1", text)


def _rule(match: re.Match) -> _Rule:
    if match.group(1):
        return _Rule(None)
    source = _unescape(match.group(2))
    try:
        pattern = re.compile(source)
    except re.error as exc:
        raise MappingRulesError(f"rule pattern {source!r}: {exc}") from None
    replacement = _GROUP_REFERENCE.sub(r"\\g<\1>", _unescape(match.group(3)).replace("\\", "\\\\"))
    return _Rule(pattern, replacement, match.group(4))


class PrincipalMapper:
    """Parsed rules (``parse`` it from the setting's text)."""

    def __init__(self, rules: tuple[_Rule, ...]) -> None:
        self.rules = rules

    @classmethod
    def parse(cls, text: str) -> PrincipalMapper:
        """Raises ``MappingRulesError`` naming the part that is not a rule."""
        rules, position, text = [], 0, text.strip()
        while position < len(text):
            match = _RULE.match(text, position)
            if match is None or match.end() == position:
                raise MappingRulesError(f"not a rule at {text[position:position + 40]!r} "
                                        "(RULE:pattern/replacement/[LU] or DEFAULT)")
            rules.append(_rule(match))
            position = match.end()
        if not rules:
            raise MappingRulesError("no rules (DEFAULT keeps the subject as it is)")
        return cls(tuple(rules))

    def name(self, subject: str) -> str | None:
        """The principal name for ``subject``, or None when no rule matches."""
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                return name
        return None


@functools.lru_cache(maxsize=8)
def mapper(text: str) -> PrincipalMapper:
    """The parsed rules of a setting's text, parsed once per process."""
    return PrincipalMapper.parse(text)
