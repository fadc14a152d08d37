# railcp profile, format 1: one [worker] section per worker thread.
# Written by 'railcp topo --save-profile' for tests/fixtures/topo_gpu8.xml (host gpu-server-8nic).
# Edit freely; --profile FILE checks every line against the machine it runs on.

qps_per_rail = 4

[worker]
node = 0
cpus = 0-3
rails = mlx5_0:1 mlx5_1:1
buffer_mib = 64

[worker]
node = 1
cpus = 4-7
rails = mlx5_2:1 mlx5_3:1
buffer_mib = 64

[worker]
node = 2
cpus = 8-11
rails = mlx5_4:1 mlx5_5:1
buffer_mib = 64

[worker]
node = 3
cpus = 12-15
rails = mlx5_6:1 mlx5_7:1
buffer_mib = 64
