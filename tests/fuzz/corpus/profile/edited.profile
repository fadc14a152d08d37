# two rails on socket 1, one on socket 0
qps_per_rail = 2
[worker]
  node = 1   # comment
cpus=8-11
rails = mlx5_3:1, mlx5_2:1
[worker]
node = 0
rails = mlx5_0:1
buffer_mib = 10
