import collections


class Counts(collections.UserDict):
    def __setitem__(self, key, value):
        super().__setitem__(key, clamp(value))


def clamp(value):
    return max(0, value)


def main():
    counts = Counts()
    counts["a"] = -1
    return counts.data
