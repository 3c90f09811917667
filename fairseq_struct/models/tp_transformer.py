"""TP-Transformer encoder-decoder (Soulos et al., after Schlag et al.; design.md §2).

fairseq's `TransformerModel` (`--arch tp_transformer_base`, `--task translation_morph`) with its
layers swapped: every attention binds its output to a learned role vector and self-attention uses
Shaw relative positions; embeddings, generation and checkpoints are stock.
"""

from argparse import Namespace
from pathlib import Path

from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerEncoderBase,
    TransformerModel,
)
from fairseq.models.transformer.transformer_legacy import base_architecture
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import nn

from fairseq_struct.modules.role_attention import ROLE_INITIALISATIONS, RoleAttentionOptions
from fairseq_struct.modules.tp_transformer_layer import (
    TPTransformerDecoderLayer,
    TPTransformerEncoderLayer,
)


def _wrap_layer(layer: nn.Module, cfg: TransformerConfig) -> nn.Module:
    """Activation checkpointing and FSDP wrapping, as fairseq's own build_*_layer do."""
    if cfg.checkpoint_activations:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    min_params_to_wrap = cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0
    return fsdp_wrap(layer, min_num_params=min_params_to_wrap)


class TPTransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, options: RoleAttentionOptions) -> None:
        # The parent constructor builds the layers, which need the options.
        self.attention_options = options
        super().__init__(cfg, dictionary, embed_tokens)

    def build_encoder_layer(self, cfg):
        return _wrap_layer(TPTransformerEncoderLayer(cfg, self.attention_options), cfg)


class TPTransformerDecoder(TransformerDecoderBase):
    def __init__(
        self, cfg, dictionary, embed_tokens, options: RoleAttentionOptions, no_encoder_attn=False
    ) -> None:
        self.attention_options = options
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        layer = TPTransformerDecoderLayer(cfg, self.attention_options, no_encoder_attn)
        return _wrap_layer(layer, cfg)


@register_model("tp_transformer")
class TPTransformerModel(TransformerModel):
    """TP-Transformer: every attention binds V̄ to a role vector R (Z = V̄ ⊙ R + V̄)."""

    uses_roles = True

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument(
            "--attention-head-dim",
            type=int,
            metavar="N",
            help="per-head dimension d_k = d_v (= d_r with roles); heads * N need not equal "
            "the embedding dimension (the baseline uses 80 to match the TP-Transformer's size)",
        )
        parser.add_argument(
            "--max-relative-positions",
            type=int,
            metavar="K",
            help="clipping distance k of Shaw et al.'s relative positions (2k+1 learned "
            "buckets) in encoder and decoder self-attention; 0 turns them off",
        )
        parser.add_argument(
            "--absolute-positions",
            action="store_true",
            help="keep fairseq's sinusoidal absolute positions next to the relative ones "
            "(they are off by default when relative positions are on)",
        )
        if cls.uses_roles:
            parser.add_argument(
                "--role-binding",
                choices=["residual", "plain"],
                help="residual: Z = V̄ ⊙ R + V̄ (Soulos et al., default); "
                "plain: Z = V̄ ⊙ R (Schlag et al.)",
            )
            parser.add_argument(
                "--role-init",
                choices=ROLE_INITIALISATIONS,
                help="initialisation of the role weights W_r: xavier (as W_q/W_k/W_v, default) "
                "or normal (std 1/sqrt(d_r), which makes R several times larger; see "
                "modules/role_attention.py)",
            )

    @classmethod
    def from_pretrained(
        cls,
        model_name_or_path: str,
        checkpoint_file: str = "model.pt",
        data_name_or_path: str = ".",
        **kwargs,
    ):
        """fairseq's hub interface (`.translate([...])`, `.sample`, `.generate`).

        Unless `bpe` is given, raw text goes through `--bpe struct_sentencepiece` with the data
        directory's spm.model, as the preparation treated it (whitespace normalised), and comes
        back as plain words:

            TPTransformerModel.from_pretrained("checkpoints", "checkpoint_best.pt",
                                               data_name_or_path="data-bin/en-tr")
        """
        import fairseq_struct

        fairseq_struct.register()  # the task and text encoder the checkpoint names
        if "bpe" not in kwargs:
            data = Path(data_name_or_path)
            if data_name_or_path.startswith("."):  # fairseq: relative to the model directory
                data = Path(model_name_or_path, data_name_or_path)
            if (data / "spm.model").is_file():
                kwargs.update(
                    bpe="struct_sentencepiece", sentencepiece_model=str(data / "spm.model")
                )
        return super().from_pretrained(
            model_name_or_path, checkpoint_file, data_name_or_path, **kwargs
        )

    def set_beam_size(self, beam_size: int) -> None:
        """fairseq's SequenceGenerator announces its beam through the model (as for BART), so
        that cross-attention can cache the encoder keys/values once per sentence."""
        self.decoder.set_beam_size(beam_size)

    @classmethod
    def attention_options(cls, args: Namespace) -> RoleAttentionOptions:
        return RoleAttentionOptions(
            head_dim=args.attention_head_dim,
            use_roles=cls.uses_roles,
            role_residual=getattr(args, "role_binding", "residual") == "residual",
            max_relative_positions=args.max_relative_positions,
            role_init=getattr(args, "role_init", "xavier"),
        )

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return TPTransformerEncoder(cfg, src_dict, embed_tokens, cls.attention_options(args))

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return TPTransformerDecoder(
            cfg,
            tgt_dict,
            embed_tokens,
            cls.attention_options(args),
            no_encoder_attn=cfg.no_cross_attention,
        )


def set_attention_defaults(args: Namespace, head_dim: int) -> None:
    """Defaults shared by the TP-Transformer and its relative-position baseline."""
    args.attention_head_dim = getattr(args, "attention_head_dim", head_dim)
    args.max_relative_positions = getattr(args, "max_relative_positions", 16)
    args.role_binding = getattr(args, "role_binding", "residual")
    args.role_init = getattr(args, "role_init", "xavier")
    args.absolute_positions = getattr(args, "absolute_positions", False)
    # Relative positions replace the sinusoidal ones unless asked to keep both.
    args.no_token_positional_embeddings = getattr(
        args,
        "no_token_positional_embeddings",
        args.max_relative_positions > 0 and not args.absolute_positions,
    )
    args.dropout = getattr(args, "dropout", 0.1)
    base_architecture(args)


@register_model_architecture("tp_transformer", "tp_transformer")
def tp_transformer_architecture(args: Namespace) -> None:
    set_attention_defaults(args, head_dim=64)


@register_model_architecture("tp_transformer", "tp_transformer_base")
def tp_transformer_base(args: Namespace) -> None:
    """The paper's model: 6+6 layers, 8 heads, d_model 512, ffn 2048, d_k=d_v=d_r=64, k=16."""
    set_dimensions(args, layers=6, embed_dim=512, ffn_dim=2048, heads=8)
    tp_transformer_architecture(args)


def set_dimensions(args: Namespace, layers: int, embed_dim: int, ffn_dim: int, heads: int) -> None:
    """Encoder and decoder sizes of a named arch (the decoder copies the encoder's widths)."""
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", embed_dim)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn_dim)
    args.encoder_layers = getattr(args, "encoder_layers", layers)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", heads)
    args.decoder_layers = getattr(args, "decoder_layers", layers)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", heads)


def tiny_encoder_decoder_dimensions(args: Namespace) -> None:
    """Dimensions of the tiny archs: tests, the CPU demo and multi-process smoke runs."""
    set_dimensions(args, layers=2, embed_dim=128, ffn_dim=512, heads=4)


@register_model_architecture("tp_transformer", "tp_transformer_tiny")
def tp_transformer_tiny(args: Namespace) -> None:
    """2+2 layers, d_model 128, 4 heads of 32, ffn 512: trains in minutes on a laptop CPU."""
    tiny_encoder_decoder_dimensions(args)
    set_attention_defaults(args, head_dim=32)
