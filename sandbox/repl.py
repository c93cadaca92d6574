# The REPL server that runs inside the sandbox (see interpreter.go): it reads
# framed cells on fd 0, runs each in one namespace that lives as long as the
# process (one episode), and writes one framed reply per cell on fd 1.
# argv: max_output preload_module...
import ast
import builtins
import fcntl
import linecache
import os
import resource
import struct
import sys
import traceback


def main():
    max_out = int(sys.argv[1])
    preload = sys.argv[2:]
    server_pid = os.getpid()

    # Move the control channel off fds 0 and 1 to high close-on-exec fds, so
    # a cell's os.write(1, ...) and its children land in the capture files,
    # never in the channel.
    high = resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 2
    ctl_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, high)
    ctl_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, high)
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    for fd in (0, 1, 2):
        os.dup2(null, fd)

    # Anonymous files capture each cell's fds 1 and 2; RLIMIT_FSIZE makes a
    # huge print fail instead of filling memory. They are memfds, outside
    # the /tmp tmpfs: a cell that fills /tmp must not take the output of the
    # cells after it (which would read "(no output)").
    out_fd, err_fd = capture_file("stdout"), capture_file("stderr")

    ready = [(b"r", b"")]
    for name in preload:
        try:
            __import__(name)
        except BaseException as e:
            ready.append((b"x", clip(format_error(e, None), max_out)))
            break
    send(ctl_out, ready)

    ns = {"__name__": "__main__", "__builtins__": builtins}
    dead = []  # stdout/stderr wrappers whose flush failed: kept so that GC never flushes them into a later cell
    count = 0
    while True:
        code = read_request(ctl_in)
        count += 1
        for fd in (out_fd, err_fd):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        value, error = run_cell(code, ns, count)
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except BaseException as e:
                dead.append(s)
                # Output the cell printed but that could not be written is
                # an error of the cell, never silence.
                lost = "the cell's output could not be written: %s\n" % format_error(e, None, only=True).strip()
                error = (error or "") + lost
        if os.getpid() != server_pid:
            # A child forked by the cell returned here; it must not answer.
            os._exit(0)
        os.dup2(null, 1)
        os.dup2(null, 2)
        out, out_cut = grab(out_fd, max_out)
        err, err_cut = grab(err_fd, max_out)
        reply = [(b"o", out), (b"e", err), (b"n", str(count).encode())]
        if out_cut or err_cut:
            reply.append((b"t", (b"o" if out_cut else b"") + (b"e" if err_cut else b"")))
        if value is not None:
            reply.append((b"v", clip(value, max_out)))
        if error is not None:
            reply.append((b"x", clip(error, max_out)))
        send(ctl_out, reply)


def capture_file(name):
    try:
        return os.memfd_create("grpo-" + name, os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # no memfd (an old kernel or python)
        tmp = os.environ.get("TMPDIR", "/tmp")
        return os.open(tmp, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)


def run_cell(code, ns, count):
    """Runs one cell like a notebook: statements, then the trailing
    expression's repr as the value. Returns (value, error) as str or None."""
    name = "<cell-%d>" % count
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        tree = ast.parse(code, name, "exec")
    except BaseException as e:
        return None, format_error(e, None, only=True)
    try:
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body.pop()
        if tree.body:
            exec(compile(tree, name, "exec"), ns)
        if last is not None:
            v = eval(compile(ast.Expression(last.value), name, "eval"), ns)
            if v is not None:
                return repr(v), None
        return None, None
    except BaseException as e:
        # Skip this function's frame: the traceback starts in the cell.
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        return None, format_error(e, tb)


def format_error(e, tb, only=False):
    try:
        if only:
            return "".join(traceback.format_exception_only(type(e), e))
        return "".join(traceback.format_exception(type(e), e, tb))
    except BaseException:
        return type(e).__name__  # formatting can fail too, e.g. out of memory


def grab(fd, max_out):
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, max_out), 0), size > max_out


def clip(s, max_out):
    return s.encode("utf-8", "backslashreplace")[:max_out]


def read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            os._exit(0)  # Go closed the channel: the episode is over
        buf += chunk
    return bytes(buf)


def read_request(fd):
    hdr = read_exact(fd, 8)
    if hdr[:4] != b"GRP1":
        os._exit(3)
    body = read_exact(fd, struct.unpack(">I", hdr[4:])[0])
    if len(body) < 5 or body[:1] != b"c":
        os._exit(3)
    n = struct.unpack(">I", body[1:5])[0]
    return body[5 : 5 + n].decode("utf-8", "replace")


def send(fd, fields):
    body = b"".join(struct.pack(">cI", t, len(d)) + d for t, d in fields)
    view = memoryview(b"GRP1" + struct.pack(">I", len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


main()
