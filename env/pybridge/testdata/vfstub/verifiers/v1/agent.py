"""verifiers.v1.agent's Segment (stand-in): what interaction.turn returns."""

from dataclasses import dataclass

from verifiers.v1.types import AssistantMessage


@dataclass(frozen=True)
class Segment:
    messages: list
    terminated: bool = False

    @property
    def last_reply(self):
        for m in reversed(self.messages):
            if isinstance(m, AssistantMessage):
                return (m.content or "").strip()
        return ""
