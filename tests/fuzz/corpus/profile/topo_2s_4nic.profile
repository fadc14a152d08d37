# railcp profile, format 1: one [worker] section per worker thread.
# Written by 'railcp topo --save-profile' for tests/fixtures/topo_2s_4nic.xml (host two-socket-4nic).
# Edit freely; --profile FILE checks every line against the machine it runs on.

qps_per_rail = 4

[worker]
node = 0
cpus = 0-7
rails = mlx5_0:1 mlx5_1:1
buffer_mib = 64

[worker]
node = 1
cpus = 8-15
rails = mlx5_2:1 mlx5_3:1
buffer_mib = 64
