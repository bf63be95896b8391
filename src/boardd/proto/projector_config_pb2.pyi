from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SpriteMetadata(_message.Message):
    __slots__ = ("image_path", "single_image_dim")
    IMAGE_PATH_FIELD_NUMBER: _ClassVar[int]
    SINGLE_IMAGE_DIM_FIELD_NUMBER: _ClassVar[int]
    image_path: str
    single_image_dim: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, image_path: _Optional[str] = ..., single_image_dim: _Optional[_Iterable[int]] = ...) -> None: ...

class EmbeddingInfo(_message.Message):
    __slots__ = ("tensor_name", "metadata_path", "bookmarks_path", "tensor_shape", "sprite", "tensor_path")
    TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_PATH_FIELD_NUMBER: _ClassVar[int]
    BOOKMARKS_PATH_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    SPRITE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PATH_FIELD_NUMBER: _ClassVar[int]
    tensor_name: str
    metadata_path: str
    bookmarks_path: str
    tensor_shape: _containers.RepeatedScalarFieldContainer[int]
    sprite: SpriteMetadata
    tensor_path: str
    def __init__(self, tensor_name: _Optional[str] = ..., metadata_path: _Optional[str] = ..., bookmarks_path: _Optional[str] = ..., tensor_shape: _Optional[_Iterable[int]] = ..., sprite: _Optional[_Union[SpriteMetadata, _Mapping]] = ..., tensor_path: _Optional[str] = ...) -> None: ...

class ProjectorConfig(_message.Message):
    __slots__ = ("model_checkpoint_path", "embeddings", "model_checkpoint_dir")
    MODEL_CHECKPOINT_PATH_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_CHECKPOINT_DIR_FIELD_NUMBER: _ClassVar[int]
    model_checkpoint_path: str
    embeddings: _containers.RepeatedCompositeFieldContainer[EmbeddingInfo]
    model_checkpoint_dir: str
    def __init__(self, model_checkpoint_path: _Optional[str] = ..., embeddings: _Optional[_Iterable[_Union[EmbeddingInfo, _Mapping]]] = ..., model_checkpoint_dir: _Optional[str] = ...) -> None: ...
