state do
  interface input, :a, [:k]
  interface output, :o, [:k]
bloom do
  o <= (a * a).pairs(:k => :k
