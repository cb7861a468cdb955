"""Kafka's ssl.principal.mapping.rules syntax, parsed and applied (``principal_mapping``)."""

from __future__ import annotations

import pytest

from tslog.broker.security.principal_mapping import MappingRulesError, PrincipalMapper

KAFKA_DOC_RULES = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n"
                   "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n"
                   "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\nDEFAULT")


@pytest.mark.parametrize("subject, name", [
    ("CN=kafka1,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "kafka1"),
    ("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=X,ST=Y,C=US", "duke@javasoft"),
    ("OU=x,cn=Admin.One,O=y", "admin.one"),
    ("O=no common name", "O=no common name"),
])
def test_the_rules_of_kafkas_documentation(subject, name):
    assert PrincipalMapper.parse(KAFKA_DOC_RULES).name(subject) == name


def test_upper_case_an_escaped_slash_and_no_match():
    mapper = PrincipalMapper.parse(r"RULE:^CN=([^,]*),OU=a\/b.*$/$1-x/U")
    assert mapper.name("CN=bob,OU=a/b,O=acme") == "BOB-X"
    assert mapper.name("CN=bob,OU=c,O=acme") is None  # no DEFAULT: refused


@pytest.mark.parametrize("text", ["", "FOO", "RULE:(/x/", "RULE:^a$/b"])
def test_text_that_is_not_rules_is_refused_naming_the_problem(text):
    with pytest.raises(MappingRulesError):
        PrincipalMapper.parse(text)
