"""verifiers' messages are models with dict-like access; this stand-in keeps
that shape (attributes, ["key"], .get, model_dump) without pydantic."""


class Message:
    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __getitem__(self, key):
        return getattr(self, key)

    def get(self, key, default=None):
        return getattr(self, key, default)

    def model_dump(self, exclude_none=False):
        return {k: v for k, v in self.__dict__.items() if not (exclude_none and v is None)}


def normalize_messages(value, *, field_name="messages"):
    if isinstance(value, str):
        return [Message(role="text", content=value)]
    out = []
    for m in value:
        if isinstance(m, dict):
            out.append(Message(**m))
        elif hasattr(m, "role") and hasattr(m, "content"):
            out.append(m)
        else:
            raise TypeError("Invalid %s item type: %s" % (field_name, type(m).__name__))
    return out
