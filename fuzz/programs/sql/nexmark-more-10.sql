INSERT INTO q21
SELECT auction, bidder, price, channel,
       CASE
         WHEN LOWER(channel) = 'apple' THEN '0'
         WHEN LOWER(channel) = 'google' THEN '1'
         ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
       END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
   OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu')
