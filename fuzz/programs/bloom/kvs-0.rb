module KVS
  state do
    interface input, :put, [:key, :val]
    interface input, :get, [:ident, :key]
    interface output, :response, [:response_id, :key, :val]
    table :log, [:key, :val]
  end

  bloom do
    log <+ put
    log <- (put * log).rights(:key => :key)
    response <= (log * get).pairs(:key => :key) do |s, l|
      [l.ident, s.key, s.val]
    end
  end
end
