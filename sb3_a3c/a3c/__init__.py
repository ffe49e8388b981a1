from sb3_a3c.a3c.a3c import A3C

__all__ = ["A3C"]
