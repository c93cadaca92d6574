"""verifiers.v1.types' message models (stand-in)."""

from verifiers.v1 import Model


class SystemMessage(Model):
    role: str = "system"
    content: object = ""


class UserMessage(Model):
    role: str = "user"
    content: object = ""


class AssistantMessage(Model):
    role: str = "assistant"
    content: str = None
    reasoning_content: str = None
    tool_calls: list = None


class ToolMessage(Model):
    role: str = "tool"
    tool_call_id: str = ""
    content: object = ""
    name: str = None
