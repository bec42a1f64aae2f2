def on_start():
    return "start"


def on_stop():
    return "stop"


class Machine:
    def __init__(self):
        self.handlers = {"start": on_start, "stop": on_stop}

    def fire(self, event):
        handler = self.handlers[event]
        return handler()


def main():
    machine = Machine()
    return machine.fire("start"), machine.fire("stop")
