import threading


class Worker(threading.Thread):
    def run(self):
        self.result = work()


def work():
    return 42


def main():
    worker = Worker()
    worker.run()
    return worker.result
