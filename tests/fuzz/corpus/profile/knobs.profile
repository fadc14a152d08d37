qps_per_rail = 2
tos = 106
ack_timeout = 14
retry_count = 3
connect_timeout = 5
[worker]
node = 0
