def retry(func):
    def attempt(*args):
        try:
            return func(*args)
        except ValueError:
            return func(*args)

    return attempt


class Client:
    @retry
    def fetch(self, key):
        return self.lookup(key)

    def lookup(self, key):
        return key


def main():
    return Client().fetch("k")
