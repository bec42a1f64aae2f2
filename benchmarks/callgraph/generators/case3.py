class Bag:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


def main():
    bag = Bag([1, 2])
    count = 0
    for _item in bag:
        count += 1
    return count, len(bag)
