class Base:
    def total(self):
        return 1


class Child(Base):
    def total(self):
        return super().total() + 1


def main():
    return Child().total()
