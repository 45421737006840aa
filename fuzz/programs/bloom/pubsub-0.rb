module PubSub
  state do
    interface input, :publish, [:key, :val]
    interface input, :subscribe, [:ident, :key]
    interface output, :response, [:response_id, :key, :val]
    table :log, [:key, :val]
    table :sub_log, [:ident, :key]
  end

  bloom do
    log <= publish
    sub_log <= subscribe
    response <= (log * sub_log).pairs(:key => :key) do |s, l|
      [l.ident, s.key, s.val]
    end
  end
end
