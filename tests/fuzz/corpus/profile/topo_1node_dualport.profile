# railcp profile, format 1: one [worker] section per worker thread.
# Written by 'railcp topo --save-profile' for tests/fixtures/topo_1node_dualport.xml (host one-node-dualport).
# Edit freely; --profile FILE checks every line against the machine it runs on.

qps_per_rail = 4

[worker]
node = 0
cpus = 0-3
rails = mlx5_0:1 mlx5_0:2
buffer_mib = 64
