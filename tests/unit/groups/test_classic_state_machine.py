"""The classic group machine under random clients: joins (with and without MEMBER_ID_REQUIRED),
syncs, heartbeats, leaves and the clock moving, in any order.

Checked after every step: one leader per generation, every member that completes a generation
receives exactly what that generation's leader assigned to it, generation ids never fall, and
no member outlives its session unless its JoinGroup or SyncGroup is waiting.
"""

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tslog.broker.groups.classic import (
    PENDING,
    ClassicConfig,
    ClassicGroups,
    ClassicState,
    JoinResponse,
    SyncResponse,
)
from tslog.protocol.errors import ErrorCode

GROUP = "g"
SESSION_MS = 100
REBALANCE_MS = 200
CLIENTS = st.integers(0, 3)


class Client:
    def __init__(self, name: str) -> None:
        self.name = name
        self.member_id = ""
        self.generation = -1
        self.leader_members: tuple = ()  # the members list of a leader's JoinGroup answer
        self.is_leader = False


class ClassicMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        ids = iter(range(10**6))
        self.groups = ClassicGroups(ClassicConfig(min_session_timeout_ms=10),
                                    lambda client: f"{client}-{next(ids)}")
        self.now = 0
        self.clients = [Client(f"c{i}") for i in range(4)]
        self.tokens = {}
        self.next_token = 0
        self.leaders: dict[int, str] = {}          # generation -> its leader
        self.members_of: dict[int, set[str]] = {}  # generation -> its members
        self.assigned: dict[int, dict[str, bytes]] = {}  # generation -> leader's assignment
        self.highest_generation = -1  # Dead until the first join

    def _token(self, client: Client, kind: str, generation: int = -1):
        self.next_token += 1
        self.tokens[self.next_token] = (client, kind, generation)
        return self.next_token

    def _settle(self, token, answer) -> None:
        if answer is not PENDING:
            self._on_answer(token, answer)
        for event in self.groups.take_events():
            self._on_answer(event.token, event.response)

    def _on_answer(self, token, answer) -> None:
        client, kind, generation = self.tokens.pop(token)
        if kind == "join":
            assert isinstance(answer, JoinResponse)
            if answer.error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED):
                client.member_id = answer.member_id
            elif answer.error is ErrorCode.UNKNOWN_MEMBER_ID:
                client.member_id = ""
            if answer.error is ErrorCode.NONE:
                g = answer.generation_id
                assert self.leaders.setdefault(g, answer.leader) == answer.leader
                client.generation = g
                client.is_leader = answer.member_id == answer.leader
                if client.is_leader:
                    ids = [member_id for member_id, _ in answer.members]
                    assert answer.leader in ids and len(set(ids)) == len(ids)
                    assert self.members_of.setdefault(g, set(ids)) == set(ids)
                    client.leader_members = answer.members
                    for member_id, metadata in answer.members:
                        assert metadata == member_id.split("-")[0].encode()
                else:
                    assert answer.members == ()
        else:
            assert isinstance(answer, SyncResponse)
            if answer.error is ErrorCode.NONE:
                expected = self.assigned[generation]
                assert answer.assignment == expected.get(client.member_id, b"")
                assert client.member_id in self.members_of.get(generation, {client.member_id})
            elif answer.error is ErrorCode.UNKNOWN_MEMBER_ID:
                client.member_id = ""

    @rule(index=CLIENTS, known_id_required=st.booleans(), second_protocol=st.booleans())
    def join(self, index, known_id_required, second_protocol):
        client = self.clients[index]
        protocols = [("range", client.name.encode())]
        if second_protocol:
            protocols.append(("roundrobin", client.name.encode()))
        token = self._token(client, "join")
        answer = self.groups.join(GROUP, client.member_id, (client.name, "h"), SESSION_MS,
                                  REBALANCE_MS, "consumer", protocols, known_id_required, None,
                                  token, self.now)
        self._settle(token, answer)

    @rule(index=CLIENTS)
    def sync(self, index):
        client = self.clients[index]
        generation = client.generation
        assignments = {}
        if client.is_leader:
            assignments = {member_id: f"{generation}/{member_id}".encode()
                           for member_id, _ in client.leader_members}
        token = self._token(client, "sync", generation)
        answer = self.groups.sync(GROUP, generation, client.member_id, "consumer", None,
                                  assignments, token, self.now)
        if client.is_leader and answer is PENDING:
            # Only the leader's SyncGroup of the group's current generation stores one.
            described = self.groups.describe(GROUP)
            if described.state is ClassicState.STABLE and described.leader == client.member_id:
                self.assigned.setdefault(generation, assignments)
        self._settle(token, answer)

    @rule(index=CLIENTS)
    def heartbeat(self, index):
        client = self.clients[index]
        code = self.groups.heartbeat(GROUP, client.generation, client.member_id, self.now)
        if code is ErrorCode.UNKNOWN_MEMBER_ID:
            client.member_id = ""
        self._settle(None, PENDING)

    @rule(index=CLIENTS)
    def leave(self, index):
        client = self.clients[index]
        self.groups.leave(GROUP, [client.member_id], self.now)
        client.member_id = ""
        self._settle(None, PENDING)

    @rule(ms=st.integers(0, 150))
    def tick(self, ms):
        self.now += ms
        deadline = self.groups.next_deadline()
        removed = self.groups.advance(self.now)
        if deadline is None or deadline > self.now:
            assert removed == []  # nothing was due, so nobody may go
        self._settle(None, PENDING)

    @invariant()
    def generation_never_falls(self):
        generation = self.groups.describe(GROUP).generation_id
        assert generation >= self.highest_generation
        self.highest_generation = max(self.highest_generation, generation)

    @invariant()
    def no_member_outlives_its_session(self):
        for member in self.groups.describe(GROUP).members:
            if not (member.awaiting_join or member.awaiting_sync):
                assert member.last_seen_ms + member.session_timeout_ms > self.now

    @invariant()
    def a_settled_group_has_its_leader(self):
        described = self.groups.describe(GROUP)
        if described.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
            assert described.leader in {m.member_id for m in described.members}
            assert self.leaders[described.generation_id] == described.leader
            assert not any(m.awaiting_join for m in described.members)
        if described.state is ClassicState.EMPTY:
            assert described.members == ()


ClassicMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40,
                                            deadline=None)
TestClassicMachine = ClassicMachine.TestCase
