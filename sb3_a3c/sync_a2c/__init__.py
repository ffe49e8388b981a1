from sb3_a3c.sync_a2c.sync_a2c import SyncA2C

__all__ = ["SyncA2C"]
