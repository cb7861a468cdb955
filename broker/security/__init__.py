"""The broker's security: TLS contexts, SASL/SCRAM authentication, principals, ACL
evaluation and connection limits.

Below the server and above storage (DESIGN.md, "Growing the product"): ``server/`` asks it
before every handler; it keeps credentials and ACLs in the data dir (single node) or etcd
(cluster). A principal is a string in Kafka's form: ``User:ANONYMOUS`` before (or without)
authentication, ``User:<name>`` after SCRAM, ``User:<subject DN>`` from a mutual-TLS client
certificate.
"""

ANONYMOUS = "User:ANONYMOUS"
