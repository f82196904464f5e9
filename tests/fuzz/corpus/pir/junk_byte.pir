func @f(%a: tensor<2xf32>) -> tensor<2xf32> { ` }
