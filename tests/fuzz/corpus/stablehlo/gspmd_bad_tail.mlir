module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%x: tensor<4x2xf32> {mhlo.sharding = "{devices=[2,1]0,1 junk}"}) -> tensor<4x2xf32> {
    return %x : tensor<4x2xf32>
  }
}
