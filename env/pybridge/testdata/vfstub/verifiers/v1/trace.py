"""verifiers.v1.trace (stand-in): a rollout's record, scored by its task."""

from verifiers.v1 import Model
from verifiers.v1.types import AssistantMessage


class TraceTask(Model):
    type: str = ""
    data: object = None


class Reward(Model):
    score: float = 0.0
    weight: float = 1.0

    @property
    def value(self):
        return self.score * self.weight


class Trace(Model):
    task: TraceTask = None
    nodes: list = list
    rewards: dict = dict
    metrics: dict = dict
    info: dict = dict
    errors: list = list
    is_completed: bool = False
    ok: bool = False
    stop_condition: str = None

    @property
    def reward(self):
        return sum(r.value for r in self.rewards.values() if r is not None)

    @property
    def messages(self):
        return [n.message for n in self.nodes]

    @property
    def num_turns(self):
        return sum(1 for n in self.nodes if n.sampled)

    @property
    def assistant_messages(self):
        return [m for m in self.messages if isinstance(m, AssistantMessage)]

    @property
    def last_reply(self):
        msgs = self.assistant_messages
        return (msgs[-1].content or "").strip() if msgs else ""

    def record_metric(self, name, value):
        self.metrics[name] = float(value)

    def record_reward(self, name, value, weight=1.0):
        self.rewards[name] = Reward(score=float(value), weight=float(weight))
