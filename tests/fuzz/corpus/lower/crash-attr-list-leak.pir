spmd @rs(%x: tensor<7x8xf32> {dist = [[], ["model"]]}, %w: tensor<8x8xf32> {dist = [["model"], []]') -> (tensor<3x8xf32> {dist = [["model"], []]}) mesh {model = 2} {
  %0 = matmul(%x, %w)
  %1 = reduÿÿÿÿÿÿÿÿer(%0) {sizeaxes = [model], dim = 0, size = 2}
  %2 = relu(%1)
  return %2
}
