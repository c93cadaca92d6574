"""verifiers.v1.graph's MessageNode (stand-in): a message, its parent
node, and whether the model sampled it."""

from verifiers.v1 import Model


class MessageNode(Model):
    parent: int = None
    message: object = None
    sampled: bool = False
