def log(message):
    return message


def make_logger(prefix):
    def emit(message):
        return log(prefix + message)

    return emit


class Service:
    def __init__(self):
        self.emit = make_logger("svc: ")

    def run(self):
        return self.emit("run")


def main():
    return Service().run()
