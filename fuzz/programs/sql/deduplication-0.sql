INSERT INTO unique_orders
SELECT order_id, user_id, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY ts ASC) AS rn
  FROM orders
) WHERE rn = 1
