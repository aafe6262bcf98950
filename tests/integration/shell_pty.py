#!/usr/bin/env python3
"""Drives `coll-plan shell` through a real terminal (a pty): completion, history, Ctrl-R, Ctrl-C on
a running sweep and at the prompt, undo. Called by coll_plan_shell.sh: shell_pty.py COLL_PLAN HISTORY."""
import os, pty, re, select, sys, time, signal

binary, hist = sys.argv[1], sys.argv[2]
checks = failures = 0

def ok(cond, what, got=""):
    global checks, failures
    checks += 1
    if cond: print(f"ok: {what}")
    else:
        failures += 1
        print(f"FAIL: {what}: {got[-600:]!r}")

class Shell:
    def __init__(self):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(binary, [binary, "shell", "--history", hist])
        self.buf = ""
    def read_until(self, text, timeout=60):
        end = time.time() + timeout
        while text not in self.buf and time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try: self.buf += os.read(self.fd, 65536).decode(errors="replace")
                except OSError: break
        found = text in self.buf
        got, self.buf = self.buf, self.buf[self.buf.index(text) + len(text):] if found else ""
        return found, got
    def read_until_re(self, pattern, timeout=60):
        end = time.time() + timeout
        while not re.search(pattern, self.buf) and time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try: self.buf += os.read(self.fd, 65536).decode(errors="replace")
                except OSError: break
        m = re.search(pattern, self.buf)
        got, self.buf = self.buf, self.buf[m.end():] if m else ""
        return m is not None, got
    def send(self, s):
        # As a person types: after the prompt appears, libedit still has to put the terminal in its
        # editing mode; keys that come before are the kernel's (^R would reprint the line).
        time.sleep(0.5)
        os.write(self.fd, s.encode())
    def close(self):
        self.send("quit\r")
        _, status = os.waitpid(self.pid, 0)
        return status

s = Shell()
ok(s.read_until("coll-plan> ")[0], "the prompt")
s.send("sy\t")
found, got = s.read_until("nth ")
ok(found, "Tab completes a command (sy -> synth)", got)
s.send("dgx-h1\t")
found, got = s.read_until("00 ")
ok(found, "Tab completes a preset (dgx-h1 -> dgx-h100)", got)
s.send("2\r")
found, got = s.read_until("16 ranks")
ok(found, "synth dgx-h100 2 loads 16 ranks", got)
s.read_until("coll-plan> ")
s.send("compare allreduce 1G\r")
found, got = s.read_until("coll-plan> ")
ok(found and "*" in got, "compare marks the best", got)
s.send("fail link node0/ni\t")
found, got = s.read_until("c")
ok(found, "Tab completes a vertex id (node0/ni -> node0/nic)", got)
s.send("0 fab\t")
found, got = s.read_until("ric/leaf0.0 ")
ok(found, "Tab completes a link's far end among the first end's neighbours (fab -> fabric/leaf0.0)", got)
s.send("\r")
found, got = s.read_until("coll-plan> ")
ok(found and "edit 1: fail link node0/nic0 fabric/leaf0.0" in got, "a link fails", got)
s.send("undo\r")
found, got = s.read_until("coll-plan> ")
ok(found and "undone: fail link" in got, "undo takes the edit back", got)
# A sweep long enough to show its progress (on a terminal, after 2 s), then stopped.
s.send("synth dgx-h100 32\r")
found, got = s.read_until("coll-plan> ")
ok(found and "256 ranks" in got, "synth dgx-h100 32 loads 256 ranks", got)
s.send("sweep allreduce 1K 1G 2\r")
# The first progress line (2 s in): the ops of the plan being simulated, or the plans done so far.
found, got = s.read_until_re(r"sweep: \d+ (plans simulated|of \d+ ops)", timeout=60)
ok(found, "a long sweep shows its progress", got)
s.send("\x03")  # Ctrl-C
found, got = s.read_until("coll-plan> ", timeout=60)
ok(found and "interrupted" in got, "Ctrl-C stops a long sweep and the shell goes on", got)
s.send("\x1b[A")  # Up: the last command again
found, got = s.read_until("sweep allreduce 1K 1G 2")
ok(found, "Up recalls the last command", got)
s.send("\x03")  # Ctrl-C at the prompt: the line is dropped
found, got = s.read_until("coll-plan> ")
ok(found, "Ctrl-C at the prompt gives a new prompt", got)
s.send("edits\r")
found, got = s.read_until("coll-plan> ")
ok(found and "no edits" in got, "the shell is still there after Ctrl-C", got)
status = s.close()
ok(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "quit exits 0", str(status))

lines = open(hist).read().replace("\\040", " ")
ok("compare allreduce 1G" in lines and "undo" in lines, "history kept in the file", lines)
s = Shell()
s.read_until("coll-plan> ")
s.send("\x12compare\r")  # Ctrl-R: search back in the history of the earlier session
found, got = s.read_until("coll-plan> ")
ok(found and "no topology" in got, "Ctrl-R finds a command of the earlier session (and runs it)", got)
s.close()
print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
